#include "kube/kueue_map.h"

#include <gtest/gtest.h>

namespace artel::kube {
namespace {
TEST(KueueMapTest, Builds) { EXPECT_TRUE(BuildConfig({}).conditions.empty()); }
}  // namespace
}  // namespace artel::kube
