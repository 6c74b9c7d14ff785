"""What a shared library is made of, read from its ELF headers: each section's size and
the libraries it needs (its dynamic section's NEEDED entries). `autosched compile`
reports a model library's code and weights with it, and the tests check that a model
library needs nothing but the C runtime, without binutils."""
from __future__ import annotations

import struct
from dataclasses import dataclass

SHT_DYNAMIC = 6
DT_NEEDED = 1


@dataclass(frozen=True)
class ElfInfo:
    sections: dict[str, int]  # name -> bytes
    needed: list[str]         # NEEDED entries, in order


def read_elf(path) -> ElfInfo:
    """The sections and NEEDED entries of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path} is not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize)
               for k in range(shnum)]

    def string(table: int, at: int) -> str:
        start = headers[table][4] + at
        return data[start:data.index(b"\0", start)].decode()

    sections, needed = {}, []
    for name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in headers:
        sections[string(shstrndx, name)] = size
        if kind == SHT_DYNAMIC:
            for at in range(offset, offset + size, entsize or 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == DT_NEEDED:
                    needed.append(string(link, value))
    return ElfInfo(sections, needed)
