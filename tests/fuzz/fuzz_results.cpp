// Fuzz target: results.jsonl as `placesim run --resume` reads it (scenarios/runner/results_store.h):
// read as the merged file of an MPI run is (a partial last line skipped with a warning), then
// repaired and read again as a rank's own file is, and the records aggregated into results.json
// and results.csv as the end of the run does. Every record read must write back as a line that
// reads back to the same text.
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/runner/record.h"
#include "scenarios/runner/results_store.h"
#include "tests/fuzz/fuzz_common.h"

using namespace placesim;

namespace {
void use(const std::vector<PointRecord>& records) {
  for (const PointRecord& r : records) {
    const std::string line = dump_json(to_json(r));
    PointRecord back;
    try {
      back = record_from_json(nlohmann::ordered_json::parse(line), "written", "line");
    } catch (const std::exception& e) {
      fuzz::finding(std::string("a record read from results.jsonl does not read back once written: ") + e.what() +
                    "\n" + line);
    }
    if (dump_json(to_json(back)) != line) fuzz::finding("a record does not write back the same:\n" + line);
  }
  (void)dump_json(results_document(records), 2);
  (void)records_to_csv(records);
  (void)format_point_table(records);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::ScratchFile file("results.jsonl");
  const std::string& path = file.write(data, size);
  fuzz::run_one([&] {
    std::vector<std::string> warnings;
    use(read_result_lines(path, &warnings));
  });
  return fuzz::run_one([&] {
    (void)repair_last_line(path);
    use(read_result_lines(path));
  });
}
