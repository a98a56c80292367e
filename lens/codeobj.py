"""A gfx906 code object: built with hipcc, its metadata (llvm-readelf --notes) and its disassembly
(llvm-objdump -d --mcpu=gfx906)."""
import hashlib
import os
import re
import shutil
import subprocess
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_DIRS = ("kernels", "phases/kernels")  # the library's kernels, then the ladder's
TARGET = os.environ.get("GPU_TARGET", "gfx906")
# The CPU backend's executor and runtime (the Makefile's RUNTIME for BACKEND=cpu, less the query
# cache): what a host program of the CPU build that launches kernels links.
CPU_RUNTIME = ("kernels/backend/simt_cpu.cpp", "kernels/backend/simt_executor.cpp",
               "kernels/backend/simt_watchdog.cpp", "kernels/backend/simt_race.cpp",
               "kernels/backend/runtime_cpu.cpp")


def read_tsv(path):
    """A results table as dicts by its header; [] when the file is not there yet."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def tool(env, *names):
    if os.environ.get(env):
        return os.environ[env]
    for n in names:
        if shutil.which(n):
            return n
    sys.exit("lens: none of %s found (set %s)" % (", ".join(names), env))


def toolchain_name():
    """'rocm' + the HIP version hipcc reports (major.minor), e.g. rocm5.2."""
    m = re.search(r"HIP version: (\d+\.\d+)", hipcc_version())
    return "rocm" + m.group(1) if m else "rocm"


def toolchain_and_objects_dir(pair):
    """The toolchain label and code-object directory a command's optional TOOLCHAIN CO_DIR pair names;
    without both, the local hipcc's label and build/isa."""
    if len(pair) == 2:
        return pair[0], pair[1]
    return toolchain_name(), os.path.join(ROOT, "build/isa")


def toolchain_key():
    """The toolchain's name and a hash of all hipcc --version says (compiler and LLVM builds): what
    keeps code objects of two toolchains apart in a cache directory."""
    return "%s-%s" % (toolchain_name(), hashlib.sha1(hipcc_version().encode()).hexdigest()[:8])


def hipcc_version():
    return subprocess.run([tool("HIPCC", "hipcc"), "--version"], capture_output=True, text=True).stdout


# ---- build ---------------------------------------------------------------------
def build_ggml(ggml_dir, name, outdir):
    """src/ggml-cuda/NAME.cu of a ggml checkout (or a llama.cpp one: its ggml/) as a gfx906 code
    object OUTDIR/ggml_NAME.co, with the defines and flags of ggml's HIP build (device code only);
    one newer than the source is taken as it is."""
    root = os.path.abspath(ggml_dir)
    if os.path.isdir(os.path.join(root, "ggml", "src")):
        root = os.path.join(root, "ggml")
    cu = os.path.join(root, "src", "ggml-cuda", name + ".cu")
    if not os.path.exists(cu):
        sys.exit("lens: no src/ggml-cuda/%s.cu under %s" % (name, ggml_dir))
    co = os.path.join(outdir, "ggml_%s.co" % name)
    if os.path.exists(co) and os.path.getmtime(co) >= os.path.getmtime(cu):
        return co
    cmd = [tool("HIPCC", "hipcc"), "-x", "hip", "--offload-arch=" + TARGET, "-O3", "-DNDEBUG", "-std=gnu++17",
           "-DGGML_USE_HIP", "-D__HIP_PLATFORM_AMD__=1", "-I" + os.path.join(root, "src"),
           "-I" + os.path.join(root, "include"), "--cuda-device-only", "--no-gpu-bundle-output", "-c", cu, "-o", co]
    if subprocess.run(cmd).returncode:
        sys.exit("lens: %s does not build for %s with %s" % (cu, TARGET, cmd[0]))
    return co


def build(src, outdir, flags=()):
    """Device-only gfx906 code object of one kernel file (the same flags as
    the Makefile's HIP build, then flags)."""
    hipcc = tool("HIPCC", "hipcc")
    co = os.path.join(outdir, os.path.basename(src).replace(".cpp", ".co"))
    if subprocess.run([hipcc, "-x", "hip", "-std=c++17", "--offload-arch=" + TARGET, "-O3", "-DKDN_BACKEND_HIP"] +
                      list(flags) + ["--cuda-device-only", "--no-gpu-bundle-output", "-c", src, "-o", co]).returncode:
        sys.exit("lens: %s does not build for %s" % (os.path.relpath(src, ROOT), TARGET))
    return co


def metadata(co):
    """name -> {vgpr, sgpr, scratch, lds_static, kernarg_size, args} from the AMDGPU metadata note;
    args: the kernel's arguments in order, each {offset, size, value_kind} (hidden ones included)."""
    out = subprocess.run([tool("READELF", "llvm-readelf-15", "llvm-readelf"), "--notes", co],
                         check=True, capture_output=True, text=True).stdout
    kernels, cur = {}, {}
    keys = {".vgpr_count": "vgpr", ".sgpr_count": "sgpr", ".private_segment_fixed_size": "scratch",
            ".group_segment_fixed_size": "lds_static", ".name": "name", ".vgpr_spill_count": "vspill",
            ".kernarg_segment_size": "kernarg_size"}
    arg_keys = {".offset": "offset", ".size": "size", ".value_kind": "value_kind"}
    for line in out.splitlines():
        s = line.strip()
        indent = len(line) - len(line.lstrip(" -"))
        if s.startswith("- .args:") or s.startswith("amdhsa.target"):
            if "name" in cur:
                kernels[cur["name"]] = cur
            cur = {"args": []}
            continue
        m = re.match(r"(?:- )?(\.[a-z_]+):\s+(\S+)$", s)
        if not m:
            continue
        key, v = m.group(1), m.group(2)
        if indent > 4:  # an argument's field; "- " opens the next argument
            if s.startswith("- ") and "args" in cur:
                cur["args"].append({})
            if key in arg_keys and cur.get("args"):
                cur["args"][-1][arg_keys[key]] = v if key == ".value_kind" else int(v)
        elif key in keys:
            cur[keys[key]] = v if keys[key] == "name" else int(v)
    if "name" in cur:
        kernels[cur["name"]] = cur
    return kernels


def without_parameters(pretty):
    """A demangled function name without its parameter list (the last top-level '(...)': template
    arguments may hold parentheses, as a function pointer's type does)."""
    depth = 0
    for i in range(len(pretty) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(pretty[i], 0)
        if depth == 0 and pretty[i] == "(":
            return pretty[:i]
    return pretty


def demangle(names):
    if not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return {n: without_parameters(d) for n, d in zip(names, out)}


# ---- disassembly ---------------------------------------------------------------
INSN = re.compile(r"^\s+(\S+)(.*?)\s*//\s*([0-9A-Fa-f]+):")
FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
TARGET_OFF = re.compile(r"<[^>+]+\+0x([0-9a-f]+)>")


def disassemble(co):
    """name -> list of (address, mnemonic, operands, branch target or None)."""
    out = subprocess.run([tool("OBJDUMP", "llvm-objdump-15", "llvm-objdump"), "-d", "--mcpu=" + TARGET, co],
                         check=True, capture_output=True, text=True).stdout
    funcs, name, start = {}, None, 0
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            name, start = m.group(2), int(m.group(1), 16)
            funcs[name] = []
            continue
        m = INSN.match(line)
        if not m or name is None:
            continue
        mnem, ops, addr = m.group(1), m.group(2).strip(), int(m.group(3), 16)
        tgt = None
        if mnem.startswith("s_branch") or mnem.startswith("s_cbranch"):
            t = TARGET_OFF.search(line)
            if t:
                tgt = start + int(t.group(1), 16)
        funcs[name].append((addr, mnem, ops, tgt))
    return funcs
