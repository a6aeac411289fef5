"""The build step behind `pip install .` (metadata: pyproject.toml).

build_py also runs `make lib` and copies libsamebits.so into the samebits
package, so an installed samebits carries its own library and needs no
SAMEBITS_LIB. The wheel is then platform-specific (it holds a shared
library), not pure Python.

SAMEBITS_BUILD picks the make build directory (default build/, the one
`make` uses, so an up-to-date library is not rebuilt); setuptools' own
intermediate files go to build/setuptools/."""
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        build = os.environ.get("SAMEBITS_BUILD", "build")
        # the library is CPU code only: the CUDA backend is a separate archive
        subprocess.check_call(["make", "-C", ROOT, "-j%d" % (os.cpu_count() or 1),
                               "SB_CUDA=0", "BUILD=" + build, "lib"])
        lib = os.path.join(ROOT, build, "libsamebits.so")
        dest = os.path.join(self.build_lib, "samebits")
        self.mkpath(dest)
        self.copy_file(lib, os.path.join(dest, "libsamebits.so"))


class PlatformDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=PlatformDistribution,
      options={"build": {"build_base": os.path.join("build", "setuptools")}})
