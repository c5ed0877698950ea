#!/bin/sh
# procwindow demo: A fetch that finishes cleanly.
esc=$(printf '\033'); R="$esc[0m"; G="$esc[32m"
echo "GET https://docs.python.org/3/library/asyncio-subprocess.html"
sleep 0.6
echo "${G}200 OK${R} text/html; charset=utf-8 · 84.2 KiB in 412 ms"
sleep 0.3
echo "extracted 12 sections, 3 code samples"
echo "saved to .cache/fetch/asyncio-subprocess.md"
