// Forced into each kernel file by lens/launches.cpp's build (-include): KDN_LAUNCH records
// a launch (lens/launches.cpp says what and why) instead of running it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/backend/backend.h"

template <auto F>
inline std::string kernel_name() {
    std::string s = __PRETTY_FUNCTION__;  // "... [with auto F = kernel<args>; ...]"
    size_t a = s.find("F = ") + 4, e = s.find_first_of(";]", a);
    return s.substr(a, e - a);
}

inline void put(std::vector<unsigned char> &b, const void *p, size_t size, size_t align) {
    b.resize((b.size() + align - 1) / align * align);
    b.insert(b.end(), (const unsigned char *)p, (const unsigned char *)p + size);
}

template <typename... A>
inline void record(const std::string &name, dim3 grid, dim3 block, size_t lds, const A &...args) {
    std::vector<unsigned char> bytes;
    (put(bytes, &args, sizeof(A), alignof(A)), ...);
    printf("%s\t%u %u %u\t%u %u %u\t%zu\t", name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z, lds);
    for (unsigned char c : bytes) printf("%02x", c);
    printf("\n");
}

#undef KDN_LAUNCH
#define KDN_LAUNCH(kernel, grid, block, shmem, ...) record(kernel_name<kernel>(), grid, block, shmem, __VA_ARGS__)

