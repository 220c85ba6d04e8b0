"""The former name of `amfkit.demo.storage_files`, kept only while amfkit.benchlab (being
moved out of the package) still imports it; to be removed with that import."""

from .storage_files import FILES, SIZES, files, png

__all__ = ["FILES", "SIZES", "files", "png"]
