/* S28 fixture: DT_NEEDEDs libkh_s28_dep.so and has no RUNPATH, so it only loads when the
   dependency is already in the process. */
int kh_s28_dep_value(void);
int kh_s28_top_value(void) { return kh_s28_dep_value() + 1; }
