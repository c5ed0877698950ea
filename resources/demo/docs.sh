#!/bin/sh
# procwindow demo: A docs build that writes its warnings to stderr.
echo "Running Sphinx v7.3.7"
i=0
for page in index quickstart supervisor window embedding changelog; do
  i=$((i + 1))
  sleep 0.8
  echo "reading sources... [$((i * 100 / 6))%] $page"
  case $page in window|embedding) echo "docs/$page.rst:$((12 + 7 * i)): WARNING: undefined label: 'proc-window'" >&2 ;; esac
done
sleep 0.5
echo "writing output... [100%] changelog"
echo "build succeeded, 2 warnings." >&2
echo "The HTML pages are in _build/html."
