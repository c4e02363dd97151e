#pragma once
// Operators that build expressions with the usual promotions: a literal takes the
// type of the other operand, a scalar is broadcast to the other operand's lanes,
// narrower integers and floats widen, an integer meets a float as that float.
// Both-constant operands fold. (== and != are spelled eq() and ne().)
#include "compiler/ir/node.h"

namespace kiln::ir {

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // floor division on integers
Expr operator%(Expr a, Expr b);  // floor modulo on integers
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DataType t, Expr v);  // broadcasts lanes of a scalar target type
Expr ceil_div(Expr a, Expr b);  // (a + b - 1) / b for positive b

// Intrinsic calls the interpreter (and every backend) knows.
Expr likely(Expr cond);  // a hint that cond is true; loop partitioning splits on it
Expr abs(Expr x);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr tanh(Expr x);
// Trigonometric and hyperbolic functions (radians), as C's <cmath>.
Expr sin(Expr x);
Expr cos(Expr x);
Expr tan(Expr x);
Expr asin(Expr x);
Expr acos(Expr x);
Expr atan(Expr x);
Expr sinh(Expr x);
Expr cosh(Expr x);
Expr asinh(Expr x);
Expr acosh(Expr x);
Expr atanh(Expr x);
Expr sigmoid(Expr x);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr round(Expr x);
Expr pow(Expr x, Expr y);
Expr shift_left(Expr x, Expr y);
Expr shift_right(Expr x, Expr y);  // arithmetic on signed types
Expr bitwise_and(Expr x, Expr y);
Expr bitwise_or(Expr x, Expr y);
Expr bitwise_xor(Expr x, Expr y);

// Brings two operands to one type by the rules above (throws on int/uint mixes).
void promote(Expr* a, Expr* b);

}  // namespace kiln::ir
