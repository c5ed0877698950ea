#!/bin/sh
# procwindow demo: A dev server that ignores SIGTERM: Term waits, then escalates to SIGKILL.
esc=$(printf '\033'); R="$esc[0m"; B="$esc[1m"; D="$esc[2m"; G="$esc[32m"; Y="$esc[33m"; C="$esc[36m"
trap 'echo "${Y}SIGTERM received: draining connections (not exiting)${R}"' TERM
echo "${G}➜${R}  ${B}Local:${R}   ${C}http://127.0.0.1:8000/${R}"
echo "${G}➜${R}  ${D}ignores SIGTERM: Term waits, then escalates to SIGKILL${R}"
n=0
while :; do
  sleep 1.2 & wait $!
  n=$((n + 1))
  case $((n % 5)) in
    0) path=/ ;; 1) path=/api/procs ;; 2) path=/api/procs/5/output ;; 3) path=/assets/index.js ;; *) path=/favicon.ico ;;
  esac
  if [ $((n % 7)) -eq 0 ]; then status="${Y}404${R}"; else status="${G}200${R}"; fi
  echo "${D}$(date +%H:%M:%S)${R} GET $path $status $((n * 13 % 90 + 1))ms"
done
