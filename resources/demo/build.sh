#!/bin/sh
# procwindow demo: A chatty watch-mode build: ANSI colours, a \r progress bar, a rebuild every few seconds.
esc=$(printf '\033'); R="$esc[0m"; B="$esc[1m"; D="$esc[2m"; G="$esc[32m"; Y="$esc[33m"
C="$esc[36m"; M="$esc[35m"; O="$esc[38;5;208m"; T="$esc[38;2;78;201;176m"
echo "${B}vite${R} v5.2.0 ${D}building for development…${R}"
n=0
while [ $n -lt 400 ]; do
  n=$((n + 1))
  [ $n -gt 1 ] && echo "${D}[watch]${R} ${Y}change${R} src/app/store.ts"
  for f in src/main.ts src/app/router.ts src/app/store.ts src/components/Table.tsx \
           src/components/OutputPane.tsx src/lib/format.ts styles/theme.css; do
    echo "  ${G}✓${R} ${C}$f${R} ${D}$(( (n * 7 + ${#f}) % 48 + 1 )) kB${R}"
    sleep 0.05
  done
  [ $((n % 3)) -eq 0 ] && echo "  ${O}warning${R} src/lib/ansi.ts:42:7 'palette' is assigned a value but never used"
  i=0
  while [ $i -le 20 ]; do
    bar=""; j=0
    while [ $j -lt 20 ]; do
      if [ $j -lt $i ]; then bar="$bar█"; else bar="$bar░"; fi
      j=$((j + 1))
    done
    printf '\r  bundling %s%s%s %3d%%' "$C" "$bar" "$R" $((i * 5))
    i=$((i + 1))
    sleep 0.05
  done
  printf '\n'
  echo "${T}${B}built${R} in $((300 + n % 97)) ms ${D}·${R} ${M}dist/assets/index.js${R} $((200 + n % 60)).$((n % 10)) kB"
  sleep 2.5
done
