#!/usr/bin/env python3
"""Draw lease-renew throughput (millions of ops/s) against threads and live
records from criterion's saved estimates, as an SVG with no dependencies.

    cargo bench --bench store -- lease_renew
    python3 scripts/plot_renew.py > docs/renew_throughput.svg
"""
import glob
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "target", "criterion")
IMPLS = ["store", "ttl_map", "dashmap_cas", "mutex_heap", "moka"]
COLORS = {"store": "#1f77b4", "ttl_map": "#2ca02c", "dashmap_cas": "#7f7f7f",
          "mutex_heap": "#d62728", "moka": "#9467bd"}


def throughput(size, impl, threads):
    path = os.path.join(ROOT, f"lease_renew_{size}", impl, f"{threads}t", "new", "estimates.json")
    if not os.path.exists(path):
        return None
    ns = json.load(open(path))["median"]["point_estimate"]
    return threads / ns * 1e3  # operations per ns * 1e3 = millions per second


def main():
    panels = [(10000, "10k live leases"), (1000000, "1M live leases")]
    width, height, pad = 760, 360, 50
    panel_w = (width - pad * 2) / len(panels)
    peak = max((throughput(s, i, t) or 0) for s, _ in panels for i in IMPLS for t in (1, 2))
    top = peak * 1.1 or 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{width/2}" y="18" text-anchor="middle" font-size="14">lease renew throughput (M ops/s), 1 and 2 threads</text>']
    plot_h = height - pad * 2 - 20
    for p, (size, title) in enumerate(panels):
        x0 = pad + p * panel_w
        out.append(f'<text x="{x0 + panel_w/2}" y="40" text-anchor="middle">{title}</text>')
        out.append(f'<line x1="{x0}" y1="{height-pad}" x2="{x0+panel_w-20}" y2="{height-pad}" stroke="black"/>')
        group_w = (panel_w - 30) / 2
        bar_w = group_w / (len(IMPLS) + 1)
        for g, threads in enumerate((1, 2)):
            gx = x0 + 10 + g * group_w
            out.append(f'<text x="{gx + group_w/2 - bar_w/2}" y="{height-pad+15}" text-anchor="middle">{threads} thread{"s" if threads > 1 else ""}</text>')
            for k, impl in enumerate(IMPLS):
                v = throughput(size, impl, threads)
                if v is None:
                    continue
                h = v / top * plot_h
                bx = gx + k * bar_w
                out.append(f'<rect x="{bx:.1f}" y="{height-pad-h:.1f}" width="{bar_w-2:.1f}" height="{h:.1f}" fill="{COLORS[impl]}"/>')
                out.append(f'<text x="{bx + bar_w/2:.1f}" y="{height-pad-h-3:.1f}" text-anchor="middle" font-size="9">{v:.1f}</text>')
    for k, impl in enumerate(IMPLS):
        lx = pad + k * 140
        out.append(f'<rect x="{lx}" y="{height-18}" width="10" height="10" fill="{COLORS[impl]}"/>')
        out.append(f'<text x="{lx+14}" y="{height-9}">{impl}</text>')
    out.append("</svg>")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
