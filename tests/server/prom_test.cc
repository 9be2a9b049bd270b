#include "server/prom.h"

#include <gtest/gtest.h>

namespace artel::server {
namespace {

TEST(PromWriterTest, WritesFamiliesSamplesAndEscapes) {
  PromWriter w;
  w.Family("m_total", "counter", "Help with \\ and\nnewline.");
  w.Sample("m_total", {{"a", "x\"y\\z\n"}}, 3);
  w.Family("m_total", "counter", "again");  // a family is declared once
  w.Sample("g", {}, 0.25);
  EXPECT_EQ(w.text(),
            "# HELP m_total Help with \\\\ and\\nnewline.\n# TYPE m_total counter\n"
            "m_total{a=\"x\\\"y\\\\z\\n\"} 3\ng 0.25\n");
}

TEST(PromWriterTest, HistogramIsCumulative) {
  Histogram h({1, 2});
  h.Observe(0.5);
  h.Observe(1.5);
  h.Observe(10);
  PromWriter w;
  w.WriteHistogram("h", {{"q", "a"}}, h);
  EXPECT_EQ(w.text(),
            "h_bucket{q=\"a\",le=\"1\"} 1\nh_bucket{q=\"a\",le=\"2\"} 2\nh_bucket{q=\"a\",le=\"+Inf\"} 3\n"
            "h_sum{q=\"a\"} 12\nh_count{q=\"a\"} 3\n");
  EXPECT_DOUBLE_EQ(h.Quantile(0.5), 1.5);
}

TEST(PromWriterTest, FormatsSpecialValues) {
  EXPECT_EQ(PromWriter::FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(PromWriter::FormatValue(0.1), "0.1");
  EXPECT_EQ(PromWriter::FormatValue(80), "80");
}

}  // namespace
}  // namespace artel::server
