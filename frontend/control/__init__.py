"""Structured control flow: cond/switch, while_loop/fori_loop, scan/map, associative_scan."""
