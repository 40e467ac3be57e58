"""Large inputs for tests/core/test_scale.py and benchmarks/bench_scale.py: the
shapes that cost quadratic time or memory before."""

import subprocess


def kernels_header(n, extern_c=True):
    """n declarations `int fI(const double x[], const int x_size, double a);`."""
    body = "".join("int f%d(const double x[], const int x_size, double a);\n" % i
                   for i in range(n))
    return 'extern "C" {\n%s}\n' % body if extern_c else body


def untemplated_yaml(names):
    """One `types: null` entry listing names."""
    return "- types: null\n  functions:\n" + "".join("    - %s\n" % s for s in names)


def alias_yaml(n_funcs, uses):
    """One entry of n_funcs functions gI x 4 type tuples, then `uses` aliases of it."""
    funcs = ", ".join("g%d" % i for i in range(n_funcs))
    return ("- &e\n  types: [[int], [double], [float], [long]]\n  functions: [%s]\n" % funcs
            + "- *e\n" * uses)


def alias_header(n_funcs):
    return "".join("template <class T> void g%d(T a);\n" % i for i in range(n_funcs))


def shared_object(path, n, cc="gcc"):
    """A shared object exporting functions f0 ... f<n-1>, all one function
    returning 0 (assembler aliases: compiling n C functions takes minutes)."""
    asm = [".text", ".globl bt_base", ".type bt_base,@function", "bt_base:",
           "  xorl %eax, %eax", "  ret"]
    for i in range(n):
        asm += [".globl f%d" % i, ".type f%d,@function" % i, ".set f%d, bt_base" % i]
    asm.append('.section .note.GNU-stack,"",@progbits')
    src = str(path) + ".s"
    with open(src, "w") as f:
        f.write("\n".join(asm) + "\n")
    subprocess.run([cc, "-shared", "-o", str(path), src], check=True)
    return str(path)
