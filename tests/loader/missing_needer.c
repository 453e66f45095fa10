/* Needs libkh_does_not_exist.so, which exists only at link time (never next to it). */
int kh_missing_value(void);
int kh_missing_needer_value(void) { return kh_missing_value(); }
