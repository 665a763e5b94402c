#include <gtest/gtest.h>
#include "families/spec/expr.h"
#include "families/spec/spec.h"
TEST(Expr, Smoke) { EXPECT_EQ(*tuned::spec::EvaluateInt("1+2*3", {}), 7); }
