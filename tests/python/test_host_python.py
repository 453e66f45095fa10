"""libkernelhub inside a Python process: its Python runtime uses the host's interpreter (the
kernel lands in this process's sys.modules) and starts no second one.

  python test_host_python.py <libkh_python_host_probe.so> <kernel folder>
"""
import ctypes
import sys

import torch  # the host runs torch, as a Python app that loads a C++ extension does


def main() -> int:
    library, kernel = sys.argv[1], sys.argv[2]
    probe = ctypes.CDLL(library)  # CDLL: the call releases the GIL, as an extension's would
    probe.kh_probe_module_name.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    out = ctypes.create_string_buffer(4096)
    status = probe.kh_probe_module_name(kernel.encode(), out, len(out))
    answer = out.value.decode()
    if status != 0:
        print(f"host probe failed: {answer}", file=sys.stderr)
        return 1
    if answer not in sys.modules:
        print(f"{answer} is not in this interpreter's sys.modules: a second interpreter ran it",
              file=sys.stderr)
        return 1
    module = sys.modules[answer]
    x = torch.ones(2)
    assert module.add_(x, torch.ones(2)) is x  # the host can call the kernel it imported
    assert "_kernelhub_importer" in sys.modules
    print(f"host interpreter imported {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
