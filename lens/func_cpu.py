"""The same call run by the CPU executor: build/cpu's libkdn.so (make BACKEND=cpu lib; KDN_CPU_LIB names
another), loaded with ctypes and called on host copies of the buffers the functional run starts from, so
make isa-run compares the gfx906 objects with the kernel source compiled by g++ on identical inputs.
The CPU build takes the MI50's launch decisions (kernels/backend/backend.h, KDN_ROUND_WORKGROUPS), so
it runs the same kernel instances on the same grids.
libkdn.so's thread-local storage is initial-exec: glibc cannot dlopen it into a running python (no static
TLS left), so the call runs in a child python that preloads it (python3 -m lens.func_cpu, pickles on
stdin and stdout)."""
import ctypes
import os
import pickle
import struct
import subprocess
import sys

from lens.codeobj import ROOT

PATHS = {"auto": 0, "recurrent": 1, "chunked": 2}
MAPS = {"tiled": 0, "block": 1}


class Tensor(ctypes.Structure):  # kdn_tensor (kernels/gated_delta_net.h)
    _fields_ = [("data", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4), ("nb", ctypes.c_size_t * 4)]


class Call(ctypes.Structure):  # kdn_gdn_call
    _fields_ = [(n, Tensor) for n in ("q", "k", "v", "g", "beta", "state")] + [
        ("dst", ctypes.c_void_p), ("K", ctypes.c_int), ("head_map", ctypes.c_int), ("path", ctypes.c_int),
        ("chunk", ctypes.c_int), ("stream", ctypes.c_void_p), ("state_dst", ctypes.c_void_p),
        ("state_slot_stride", ctypes.c_int64), ("tuning", ctypes.c_void_p)]


_lib = []


def lib_path():
    path = os.environ.get("KDN_CPU_LIB", os.path.join(ROOT, "build/cpu/libkdn.so"))
    if not os.path.exists(path):
        raise FileNotFoundError("%s missing: make BACKEND=cpu lib builds it" % path)
    return path


def library():
    if not _lib:
        lib = ctypes.CDLL(lib_path())
        lib.kdn_gated_delta_net.argtypes = [ctypes.POINTER(Call), ctypes.c_void_p, ctypes.c_size_t]
        lib.kdn_status_message.restype = ctypes.c_char_p
        lib.kdn_gdn_error_detail.restype = ctypes.c_char_p
        _lib.append(lib)
    return _lib[0]


def run_cpu(s, buffers, views, ne):
    """run_call in a child python that preloads libkdn.so (the module's docstring says why)."""
    env = dict(os.environ, LD_PRELOAD=lib_path())
    out = subprocess.run([sys.executable, "-m", "lens.func_cpu"], input=pickle.dumps((s, buffers, views, ne)),
                         capture_output=True, env=env, cwd=ROOT)
    if out.returncode:
        raise RuntimeError("the CPU library's call: " + out.stderr.decode())
    return pickle.loads(out.stdout)


def run_call(s, buffers, views, ne):
    """dst's floats as the CPU executor computes them. buffers: name -> (device address, initial bytes)
    as the functional run starts from; views: name -> (address, (nb1, nb2, nb3)); ne: name -> ne[4]."""
    host = {n: ctypes.create_string_buffer(bytes(data), max(1, len(data))) for n, (_, data) in buffers.items()}

    def at(addr):  # the host address of a device address inside one of the buffers
        for n, (base, data) in buffers.items():
            if base <= addr < base + max(1, len(data)):
                return ctypes.addressof(host[n]) + addr - base
        raise KeyError("address 0x%x in no buffer" % addr)
    call = Call()
    for n, (addr, nb) in views.items():
        t = getattr(call, n)
        t.data = at(addr)
        t.ne[:] = ne[n]
        t.nb[:] = (4,) + tuple(nb)
    call.dst, call.K, call.head_map = at(buffers["dst"][0]), s.K, MAPS[s.hmap]
    call.path, call.chunk = PATHS[s.path], s.chunk
    ws = len(buffers["workspace"][1])
    st = library().kdn_gated_delta_net(ctypes.byref(call), at(buffers["workspace"][0]) if ws else None, ws)
    if st:
        raise RuntimeError("the CPU library's call: %s %s" % (library().kdn_status_message(st).decode(),
                                                             library().kdn_gdn_error_detail().decode()))
    out = host["dst"].raw[:len(buffers["dst"][1])]
    return list(struct.unpack("<%df" % (len(out) // 4), out))


if __name__ == "__main__":
    sys.stdout.buffer.write(pickle.dumps(run_call(*pickle.loads(sys.stdin.buffer.read()))))
