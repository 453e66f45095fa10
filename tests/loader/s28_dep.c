/* S28 fixture: the dependency, found by its SONAME (libkh_s28_dep.so), not its file name. */
int kh_s28_dep_value(void) { return 28; }
