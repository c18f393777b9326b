#include "scenarios/runner/results_store.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/errors.h"
#include "sim/io/placement_io.h"

namespace placesim {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string results_file_name(int rank, int ranks) {
  return ranks > 1 ? fmt::format("results.rank{}.jsonl", rank) : std::string("results.jsonl");
}

void append_line(const std::string& path, const std::string& line) {
  const std::string data = line + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw OutputError(path, fmt::format("cannot append a result: {}", std::strerror(errno)));
  struct stat before {};
  const bool sized = ::fstat(fd, &before) == 0;
  ssize_t n;
  do n = ::write(fd, data.data(), data.size());
  while (n < 0 && errno == EINTR);
  const int err = n < 0 ? errno : ENOSPC;  // a short write without an errno: the disk filled up
  // Never complete a short write with a second one: the line would no longer be one write. Cut
  // the partial line off instead (one process appends to a file), so the file still ends with a
  // whole line; --resume also cuts one that remains (repair_last_line).
  if (n != static_cast<ssize_t>(data.size()) && n > 0 && sized) (void)!::ftruncate(fd, before.st_size);
  ::close(fd);
  if (n != static_cast<ssize_t>(data.size()))
    throw OutputError(path, fmt::format("cannot append a result ({} of {} bytes written): {}", std::max<ssize_t>(n, 0),
                                        data.size(), std::strerror(err)));
}

void append_record(const std::string& path, const PointRecord& record) { append_line(path, dump_json(to_json(record))); }

std::vector<PointRecord> read_result_lines(const std::string& path, std::vector<std::string>* warnings) {
  std::vector<PointRecord> records;
  std::ifstream in(path, std::ios::binary);
  if (!in) return records;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t begin = 0;
  for (int number = 1; begin < text.size(); ++number) {
    const std::size_t newline = text.find('\n', begin);
    const bool complete = newline != std::string::npos;
    const std::string line = text.substr(begin, complete ? newline - begin : std::string::npos);
    begin = complete ? newline + 1 : text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("line {}", number);
    ojson j;
    try {
      j = ojson::parse(line);
    } catch (const std::exception& e) {
      if (!complete) {
        // The last line without its newline: a write cut short. The point it held did not finish.
        if (warnings)
          warnings->push_back(fmt::format("{}: {}: skipped a partial last line ({} bytes without a newline)", path, where,
                                          line.size()));
        break;
      }
      throw InputError(path, where, fmt::format("is not JSON: {}", e.what()));
    }
    records.push_back(record_from_json(j, path, where));
  }
  return records;
}

std::optional<std::string> repair_last_line(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size == 0) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty() || text.back() == '\n') return std::nullopt;
  const std::size_t start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  bool whole_record = false;
  try {
    (void)record_from_json(ojson::parse(text.substr(start)), path, "last line");
    whole_record = true;
  } catch (const std::exception&) {
  }
  if (whole_record) {
    append_line(path, "");  // only its newline was missing
    return std::nullopt;
  }
  fs::resize_file(path, start, ec);
  if (ec) throw OutputError(path, "cannot cut off its partial last line: " + ec.message());
  return fmt::format("{}: removed a partial last line ({} bytes without a newline: a write cut short); its point runs again",
                     path, text.size() - start);
}

std::string results_file_in(const std::string& path) {
  const fs::path p = path;
  if (!fs::is_directory(p)) return path;
  for (const char* name : {"results.jsonl", "results.json"})
    if (fs::exists(p / name)) return (p / name).string();
  throw InputError(path, "", "no results.jsonl or results.json in this folder; run `placesim run` first");
}

std::vector<PointRecord> read_results(const std::string& file) {
  if (fs::path(file).extension() == ".jsonl") {
    if (!fs::exists(file)) throw InputError(file, "", "cannot be opened");
    return read_result_lines(file);
  }
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot be opened");
  ojson doc;
  try {
    doc = ojson::parse(in);
  } catch (const std::exception& e) {
    throw InputError(file, "", fmt::format("is not JSON: {}", e.what()));
  }
  auto it = doc.is_object() ? doc.find("strategies") : doc.end();
  if (it == doc.end() || !it->is_array())
    throw InputError(file, "strategies", "expected the array of results that `placesim run` writes");
  std::vector<PointRecord> records;
  for (std::size_t i = 0; i < it->size(); ++i)
    records.push_back(record_from_json((*it)[i], file, fmt::format("strategies[{}]", i)));
  return records;
}

void write_aggregates(const std::string& dir, std::vector<PointRecord> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const PointRecord& a, const PointRecord& b) { return a.index < b.index; });
  write_file_atomically((fs::path(dir) / "results.json").string(), dump_json(results_document(records), 2) + "\n");
  write_file_atomically((fs::path(dir) / "results.csv").string(), records_to_csv(records));
}

std::size_t merge_result_shards(const std::string& dir, std::optional<int> ranks) {
  const fs::path folder = dir;
  std::vector<std::string> shards;
  if (ranks) {
    for (int r = 0; r < *ranks; ++r) shards.push_back((folder / results_file_name(r, 2)).string());
  } else {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("results.rank") && name.ends_with(".jsonl")) shards.push_back(entry.path().string());
    }
    if (ec) throw InputError(dir, "", "cannot list the folder: " + ec.message());
    std::sort(shards.begin(), shards.end());
  }
  const std::string merged = (folder / "results.jsonl").string();
  std::map<std::string, PointRecord> by_key;
  auto keep = [&](PointRecord& r) {
    std::string key = r.key;  // copied before the record moves
    by_key.insert_or_assign(std::move(key), std::move(r));
  };
  for (PointRecord& r : read_result_lines(merged)) keep(r);
  for (const auto& shard : shards)
    for (PointRecord& r : read_result_lines(shard)) keep(r);
  std::string text;
  std::vector<PointRecord> records;
  for (auto& [key, r] : by_key) {
    text += dump_json(to_json(r)) + "\n";
    records.push_back(std::move(r));
  }
  write_file_atomically(merged, text);
  std::error_code ec;
  for (const auto& shard : shards) fs::remove(shard, ec);
  write_aggregates(dir, std::move(records));
  return by_key.size();
}

}  // namespace placesim
