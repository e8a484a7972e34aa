// libinotifytools (GPL-2.0), used only by `prefs-watch tail --raw` behind the InotifyTools trait.
#include <inotifytools/inotifytools.h>
