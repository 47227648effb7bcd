#!/usr/bin/env python3
"""Draw the him icons (a speech bubble on a rounded square) as PNGs, stdlib only.

Run from anywhere: python3 extension/icons/make-icons.py. Shapes are sampled 4x4 per pixel
for smooth edges; the output is deterministic, so re-running changes nothing.
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
BG = (53, 88, 214)  # the panel's accent colour
FG = (255, 255, 255)
SS = 4  # samples per pixel along each axis


def rounded_rect(x, y, x0, y0, x1, y1, r):
    if x < x0 or x > x1 or y < y0 or y > y1:
        return False
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def in_triangle(x, y, a, b, c):
    def side(p, q, r):
        return (p[0] - r[0]) * (q[1] - r[1]) - (q[0] - r[0]) * (p[1] - r[1])

    d1, d2, d3 = side((x, y), a, b), side((x, y), b, c), side((x, y), c, a)
    neg = d1 < 0 or d2 < 0 or d3 < 0
    pos = d1 > 0 or d2 > 0 or d3 > 0
    return not (neg and pos)


def shade(u, v):
    """Colour and alpha at unit coordinates (u, v) in [0, 1]."""
    if not rounded_rect(u, v, 0.0, 0.0, 1.0, 1.0, 0.22):
        return None
    bubble = rounded_rect(u, v, 0.18, 0.2, 0.82, 0.68, 0.14) or in_triangle(
        u, v, (0.3, 0.6), (0.48, 0.64), (0.26, 0.84)
    )
    # Two lines of "text" in the bubble, in the background colour.
    line = rounded_rect(u, v, 0.3, 0.34, 0.7, 0.4, 0.03) or rounded_rect(
        u, v, 0.3, 0.48, 0.58, 0.54, 0.03
    )
    return FG if bubble and not line else BG


def png(size):
    rows = []
    for py in range(size):
        row = bytearray([0])  # filter type: none
        for px in range(size):
            acc = [0, 0, 0]
            hits = 0
            for sy in range(SS):
                for sx in range(SS):
                    c = shade((px + (sx + 0.5) / SS) / size, (py + (sy + 0.5) / SS) / size)
                    if c is not None:
                        hits += 1
                        for i in range(3):
                            acc[i] += c[i]
            if hits:
                row += bytes(round(a / hits) for a in acc) + bytes([round(255 * hits / SS**2)])
            else:
                row += bytes(4)
        rows.append(bytes(row))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    for size in (16, 32, 48, 128):
        with open(os.path.join(HERE, f"icon-{size}.png"), "wb") as f:
            f.write(png(size))
