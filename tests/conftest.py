"""The suite runs without the on-disk compile cache (compiler/disk_cache.py): a test that
patches the lowering must see it run, not a kernel an earlier test left on disk;
tests/compiler/test_disk_cache.py turns it on in a folder of its own."""
import os

os.environ["AUTOSCHED_NO_CACHE"] = "1"
