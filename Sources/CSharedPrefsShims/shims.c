// Everything is inline in include/CSharedPrefsShims.h; SwiftPM needs one source file per C target.
#include "CSharedPrefsShims.h"
