/* A consumer of an installed libsluice: includes the public header, links the
 * library, calls into it. Built by tests/install/check.sh with CMake
 * (find_package(sluice)) and with pkg-config. */
#include <stdio.h>

#include <sluice.h>

int main(void) {
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  const struct sluice_allocator* allocator = sluice_default_allocator();
  if (allocator == NULL || allocator->allocate == NULL || options.limit != -1 || !options.ordered) {
    fprintf(stderr, "unexpected defaults from libsluice\n");
    return 1;
  }
  void* p = allocator->allocate(allocator->ctx, 64, 64);
  if (p == NULL) {
    fprintf(stderr, "default allocator failed\n");
    return 1;
  }
  allocator->deallocate(allocator->ctx, p, 64);
  printf("sluice %s\n", SLUICE_VERSION_STRING);
  return 0;
}
