"""Prints a little-endian f32 .npy file (as remat-run --save-io writes it) row by row, without
numpy: 'shape (r, c)' then one line per row, values as %g."""
import ast
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", "not an .npy file"
header_len = struct.unpack("<H", data[8:10])[0]
header = ast.literal_eval(data[10:10 + header_len].decode())
assert header["descr"] == "<f4" and not header["fortran_order"], header
shape = header["shape"]
count = (len(data) - 10 - header_len) // 4
values = struct.unpack("<%df" % count, data[10 + header_len:])
print("shape", shape)
cols = shape[-1] if shape else 1
for i in range(0, len(values), cols):
    print(" ".join("%g" % v for v in values[i:i + cols]))
