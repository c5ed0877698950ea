#!/bin/sh
# procwindow demo: A test run that fails: one red test, exit status 1.
esc=$(printf '\033'); R="$esc[0m"; B="$esc[1m"; G="$esc[32m"; RED="$esc[31m"
echo "${B}============ test session starts ============${R}"
echo "collected 7 items"
echo
for t in spawn_echo term_escalates output_order filter_regex copy_all runtime_format dismiss_running_refused; do
  sleep 0.25
  if [ "$t" = output_order ]; then
    echo "tests/test_app.py::test_$t ${RED}FAILED${R}"
  else
    echo "tests/test_app.py::test_$t ${G}PASSED${R}"
  fi
done
echo
echo "${RED}_______________ test_output_order _______________${R}"
echo "    def test_output_order():"
echo "        lines = read_all(proc)"
echo "${RED}>       assert [l.seq for l in lines] == sorted(seqs)${R}"
echo "${RED}E       assert [1, 3, 2] == [1, 2, 3]${R}"
echo
echo "${RED}FAILED${R} tests/test_app.py::test_output_order - assert [1, 3, 2] == [1, 2, 3]"
echo "${RED}======= ${B}1 failed${R}${RED}, ${G}6 passed${RED} in 1.84s =======${R}"
exit 1
