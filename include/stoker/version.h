/* stoker version numbers. */
#ifndef STOKER_VERSION_H
#define STOKER_VERSION_H

#define STK_VERSION_MAJOR  0
#define STK_VERSION_MINOR  1
#define STK_VERSION_PATCH  0
#define STK_VERSION_STRING "0.1.0"

#endif
