// libkernelhub's own symbol: lets apps (and the package test) ask which build they linked.
extern "C" const char* kernelhub_version() { return KERNELHUB_VERSION; }
