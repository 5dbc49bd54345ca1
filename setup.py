"""The optional compiled extension (pyrmq/_speedups/_native.pyx); everything else is in pyproject.toml.

Built by `pip install` (Cython comes from the build requirements); without a C compiler the build
step fails quietly (optional=True) and pyrmq runs its pure-Python reference code."""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # no Cython (e.g. an offline --no-build-isolation install): pure Python only
    ext_modules = []
else:
    ext_modules = cythonize(
        [Extension("pyrmq._speedups._native", ["pyrmq/_speedups/_native.pyx"], optional=True)],
        compiler_directives={"language_level": "3"},
        quiet=True,
    )
    for ext in ext_modules:
        ext.optional = True  # cythonize() returns new Extensions without the flag

setup(ext_modules=ext_modules)
