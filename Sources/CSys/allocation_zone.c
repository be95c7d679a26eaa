// See include/csys_allocation_zone.h.
#include "csys_allocation_zone.h"

_Thread_local int csys_allocation_zone_current __attribute__((tls_model("initial-exec"))) = CSYS_ZONE_NONE;

int csys_allocation_zone_set(int next) {
    int previous = csys_allocation_zone_current;
    csys_allocation_zone_current = next;
    return previous;
}

int csys_allocation_zone(void) { return csys_allocation_zone_current; }
