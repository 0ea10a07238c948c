#include <stdio.h>
#include "sluice.h"
int main(void) { puts(SLUICE_VERSION_STRING); return 0; }
