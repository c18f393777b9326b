#pragma once
// Quantities with units, as written in scenario files ("25Gbps", "20GB/s", "1us", "16GiB").
// Inside placesim everything is seconds, bytes and bytes per second; these parsers are the edge.
#include <string>
#include <string_view>

namespace placesim {

// Each parser accepts a bare number (already in base units) or a number followed by a unit.
// On failure they throw InputError naming `file` and `field`.
double parse_bandwidth(std::string_view text, const std::string& file, const std::string& field);
double parse_duration(std::string_view text, const std::string& file, const std::string& field);
double parse_bytes(std::string_view text, const std::string& file, const std::string& field);
// Compute rate in FLOP/s: "19.5TFLOP/s", "19.5TFLOPS", "312GFLOP/s" or a bare number; positive.
double parse_flops(std::string_view text, const std::string& file, const std::string& field);

// Human-readable forms for tables and reports.
std::string format_duration(double seconds);
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_second);
std::string format_flops(double flops_per_second);  // "19.5 TFLOP/s"

}  // namespace placesim
