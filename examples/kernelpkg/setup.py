from setuptools import setup

from bindthem.setuptools import KernelLibrary, cmdclass

setup(cmdclass=cmdclass(KernelLibrary("kernelpkg", "kernels.h", "instantiate.yml")))
