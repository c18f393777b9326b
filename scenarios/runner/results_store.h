#pragma once
// Where the records of a run live (scenarios/runner/record.h). Each finished point is one line of JSON
// appended to results.jsonl with a single write() under O_APPEND (a short one is cut off again),
// so the file holds whole lines; a resumed run skips the points whose key already has a line. results.json and
// results.csv aggregate the records (ordered by point index).
//
// With MPI, rank r of R appends to results.rank<r>.jsonl, and merge_result_shards joins the shards
// into results.jsonl (sorted by key).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/runner/record.h"

namespace placesim {

// results.jsonl for one process, results.rank<r>.jsonl for MPI rank r of several.
std::string results_file_name(int rank, int ranks);

// Appends `line` and a newline with one write() under O_APPEND; throws OutputError naming the file
// if it cannot (a short write on a full disk is cut off again, so the file keeps whole lines).
void append_line(const std::string& path, const std::string& line);
// Appends the record's JSON line.
void append_record(const std::string& path, const PointRecord& record);

// The records of a JSON Lines file, in file order; a missing file has none. A line that is not a
// record is an InputError naming the file, the line and the field, except a last line without its
// newline that is not JSON (a write cut short): it is skipped, with a warning in `warnings`.
std::vector<PointRecord> read_result_lines(const std::string& path, std::vector<std::string>* warnings = nullptr);

// Before appending to an existing results file: a last line without its newline is completed
// when it is a whole record, else cut off (a write cut short, by a full disk or another program),
// so the next line starts on a line of its own. Returns a warning when it cut.
std::optional<std::string> repair_last_line(const std::string& path);

// The results file a path names: a folder's results.jsonl (preferred) or results.json, or the
// file itself. Throws InputError when a folder holds neither.
std::string results_file_in(const std::string& path);
// The records of results.jsonl, or of results.json's "strategies"; InputError when unreadable.
std::vector<PointRecord> read_results(const std::string& file);

// Joins results.jsonl and the shards results.rank<r>.jsonl (r < ranks, or every shard present when
// `ranks` is empty) into results.jsonl, one line per key (a shard's line replaces an older one),
// sorted by key, written to a temporary file and renamed; then removes the shards and rewrites
// results.json and results.csv. Returns the number of records.
std::size_t merge_result_shards(const std::string& dir, std::optional<int> ranks);

// results.json and results.csv of the records, ordered by their index; written atomically into
// `dir`.
void write_aggregates(const std::string& dir, std::vector<PointRecord> records);

}  // namespace placesim
