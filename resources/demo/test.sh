#!/bin/sh
# procwindow demo: a pretend test run of a make-believe shop. Its one failure is
# staged (it shows how a failed run looks); nothing of yours was tested.
esc=$(printf '\033'); R="$esc[0m"; B="$esc[1m"; G="$esc[32m"; RED="$esc[31m"; DIM="$esc[2m"
echo "${DIM}procwindow demo: a pretend test run; its failure is staged, nothing of yours is tested${R}"
echo "${B}============ demo-shop test session starts ============${R}"
echo "collected 7 items"
echo
for t in cart_add cart_remove checkout_total coupon_apply shipping_rates tax_rounding invoice_total; do
  sleep 0.25
  if [ "$t" = checkout_total ]; then
    echo "demo_shop/test_cart.py::test_$t ${RED}FAILED${R}"
  else
    echo "demo_shop/test_cart.py::test_$t ${G}PASSED${R}"
  fi
done
echo
echo "${RED}_______________ test_checkout_total _______________${R}"
echo "    def test_checkout_total():"
echo "        cart = Cart([Item('tea', 4.20), Item('mug', 9.90)])"
echo "${RED}>       assert cart.total() == 14.10${R}"
echo "${RED}E       assert 14.100000000000001 == 14.1${R}"
echo
echo "${RED}FAILED${R} demo_shop/test_cart.py::test_checkout_total - assert 14.100000000000001 == 14.1"
echo "${RED}======= ${B}1 failed${R}${RED}, ${G}6 passed${RED} in 1.84s (procwindow demo) =======${R}"
exit 1
