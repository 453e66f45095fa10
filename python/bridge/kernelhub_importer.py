"""kernelhub's import hook for Python-only kernels (compiled into kernelhub_python_bridge).

A kernel package is imported from the bytes kernelhub verified at hand-out, never from the
files on disk: one finder per kernel serves exactly the files of its variant, under the
package name `metadata.json` gives as `id` (as `kernels` names it). Code objects are named
`kernelhub://<id>/<path>`, a name no file has, so `inspect` and `linecache` (Triton's
`@triton.jit` reads its function's source) ask the loader for the source instead of reading
a file that may have changed since. `__file__` still names the file on disk, for kernels
that look for data files beside their code.
"""

import contextlib
import importlib
import importlib.abc
import importlib.util
import sys
import traceback
import types

_KERNELS = {}  # package name -> _VariantFinder, for every kernel imported so far


class _VariantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, name, files, root, display_dir, origin):
        self.name = name
        self.files = files  # variant-relative path -> bytes
        self.root = root  # "" or "<python_name>/"
        self.display_dir = display_dir
        self.origin = origin

    # -- which file a module name is -------------------------------------------------
    def _locate(self, fullname):
        """(path, is_package) for a module of this kernel, None for another module."""
        if fullname == self.name:
            parts = []
        elif fullname.startswith(self.name + "."):
            parts = fullname[len(self.name) + 1 :].split(".")
        else:
            return None
        base = self.root + "/".join(parts)
        package = (base + "/__init__.py") if parts else self.root + "__init__.py"
        if package in self.files:
            return package, True
        if parts and base + ".py" in self.files:
            return base + ".py", False
        # Ours, but not among the verified files: never fall through to the path finders.
        wanted = (base + ".py") if parts else package
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: {wanted} is not a file of {self.origin}",
            name=fullname,
        )

    def _code_name(self, path):
        return f"kernelhub://{self.name}/{path}"

    # -- MetaPathFinder / Loader -------------------------------------------------------
    def find_spec(self, fullname, path=None, target=None):
        located = self._locate(fullname)
        if located is None:
            return None
        file, is_package = located
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=self._code_name(file), is_package=is_package
        )
        spec.loader_state = file
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        file = module.__spec__.loader_state
        module.__file__ = f"{self.display_dir}/{file}"
        code = compile(self.files[file], self._code_name(file), "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_source(self, fullname):
        located = self._locate(fullname)
        if located is None:
            raise ImportError(f"{fullname!r} is not a module of {self.origin}", name=fullname)
        return importlib.util.decode_source(self.files[located[0]])

    def is_package(self, fullname):
        located = self._locate(fullname)
        return located is not None and located[1]

    def get_data(self, path):
        """importlib's reader protocol: a verified file of the variant, by __file__ path."""
        prefix = self.display_dir + "/"
        relative = path[len(prefix) :] if path.startswith(prefix) else path
        try:
            return self.files[relative]
        except KeyError:
            raise OSError(f"{path} is not a file of {self.origin}") from None


def _owned(name):
    return any(name == package or name.startswith(package + ".") for package in _KERNELS)


def _kernel_modules():
    return {name: module for name, module in sys.modules.items() if _owned(name)}


def _forget(name):
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def native_dependency(namespace):
    """A compiled kernel this kernel depends on, as a module with its ops (torch.ops.<ns>)."""
    import torch
    module = types.ModuleType(namespace)
    module.ops = getattr(torch.ops, namespace)
    return module


def _dependency_scope(dependencies):
    """kernels.get_kernel_dep answers from `dependencies` while the kernel imports, as it
    does under `kernels` (which a kernel using it must have installed)."""
    if dependencies:
        try:
            from kernels.deps import use_kernel_deps
        except ImportError:
            pass
        else:
            return use_kernel_deps(dependencies)
    return contextlib.nullcontext()


def install(name, files, root, display_dir, origin, dependencies=None):
    """Imports a kernel package from `files`; the module imported before under this name
    if there is one. A failed import leaves nothing of the package behind, and a kernel that
    replaces another kernel's modules in sys.modules is refused (theirs are put back)."""
    finder = _KERNELS.get(name)
    if finder is not None:
        return sys.modules.get(name) or importlib.import_module(name)
    if name in sys.modules:
        raise ImportError(f"{origin}: the module name {name!r} is already taken in sys.modules")
    before = _kernel_modules()
    torch_before = sys.modules.get("torch")
    finder = _VariantFinder(name, files, root, display_dir, origin)
    sys.meta_path.insert(0, finder)
    try:
        with _dependency_scope(dependencies):
            module = importlib.import_module(name)
        clobbered = sorted(k for k, m in before.items() if sys.modules.get(k) is not m)
        if sys.modules.get("torch") is not torch_before:
            clobbered.append("torch")
        if clobbered:
            sys.modules.update(before)
            if torch_before is not None:
                sys.modules["torch"] = torch_before
            raise ImportError(
                f"{origin} replaced modules it does not own in sys.modules: "
                + ", ".join(clobbered)
                + "; they were restored and the kernel is refused"
            )
    except BaseException:
        sys.meta_path.remove(finder)
        _forget(name)
        raise
    _KERNELS[name] = finder
    return module


def missing(names):
    """The import names among `names` that this interpreter cannot find (no import)."""
    absent = []
    for name in names:
        try:
            if importlib.util.find_spec(name) is None:
                absent.append(name)
        except (ImportError, ValueError):
            absent.append(name)
    return absent


def describe(exc):
    """(type, message, file, line, function, traceback) of an exception."""
    kind = type(exc)
    qualified = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        qualified = f"{kind.__module__}.{qualified}"
    frames = traceback.extract_tb(exc.__traceback__)
    file, line, function = "", 0, ""
    if frames:
        file, line, function = frames[-1].filename, frames[-1].lineno or 0, frames[-1].name
    if isinstance(exc, SyntaxError) and exc.filename:
        file, line, function = exc.filename, exc.lineno or 0, "<module>"
    message = str(exc)
    notes = getattr(exc, "__notes__", None)
    if notes:
        message += "".join("\n" + str(note) for note in notes)
    text = "".join(traceback.format_exception(kind, exc, exc.__traceback__))
    return qualified, message, file, line, function, text


# Layer classes of kernels (`layers.<Name>`), run for kernelhub's kernelize on the attributes
# of the C++ module they stand in for, as kernels binds a layer's forward to the module.

_LAYER_CLASSES = {}
_LAYER_EXTRA_MEMBERS = {"can_torch_compile", "has_backward"}


def _layer_class(module_name, layer_name):
    key = (module_name, layer_name)
    cls = _LAYER_CLASSES.get(key)
    if cls is None:
        layers = getattr(sys.modules[module_name], "layers", None)
        if layers is None:
            raise ValueError(f"Kernel {module_name} does not define any layers.")
        cls = getattr(layers, layer_name, None)
        if cls is None:
            raise ValueError(f"Layer `{layer_name}` not found in kernel {module_name}.")
        _LAYER_CLASSES[key] = cls
    return cls


def layer_info(module_name, layer_name):
    """(has_backward, can_torch_compile, [kind of each forward parameter after self]), after
    kernels' checks of a layer class: an nn.Module without a constructor of its own and with
    no members beyond nn.Module's but can_torch_compile and has_backward."""
    import inspect

    import torch.nn as nn

    cls = _layer_class(module_name, layer_name)
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise TypeError(f"Layer `{layer_name}` of {module_name} is not a Torch layer.")
    if cls.__init__ is not nn.Module.__init__:
        raise TypeError(f"Layer `{layer_name}` of {module_name} must not override the nn.Module constructor.")
    module_members = {name for name, _ in inspect.getmembers(nn.Module)}
    extra = {name for name, _ in inspect.getmembers(cls)} - module_members
    if not extra <= _LAYER_EXTRA_MEMBERS:
        raise TypeError(
            f"Layer `{layer_name}` of {module_name} must not contain members beyond nn.Module's: "
            + ", ".join(sorted(extra - _LAYER_EXTRA_MEMBERS))
        )
    parameters = list(inspect.signature(cls.forward).parameters.values())[1:]
    return (
        bool(getattr(cls, "has_backward", True)),
        bool(getattr(cls, "can_torch_compile", False)),
        [p.kind.name for p in parameters],
    )


def call_layer(module_name, layer_name, training, count, *rest):
    """cls.forward on a module holding the C++ module's `count` attributes (name, value pairs
    first in `rest`), with the remaining values as arguments."""
    cls = _layer_class(module_name, layer_name)
    layer = cls()
    layer.training = training
    for i in range(count):
        setattr(layer, rest[2 * i], rest[2 * i + 1])
    return cls.forward(layer, *rest[2 * count :])
