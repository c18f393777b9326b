#pragma once
// `placesim reproduce validation`: Megatron-LM's iteration times of four GPT models on DGX A100
// (Korthikanti et al. 2022, Table 5: ../shared/validation/korthikanti2022_table5.csv), in both of
// its modes, then MegaScale's strong scaling of Megatron-LM (256-1,024 GPUs) and Megatron-Core's
// weak scaling on 48-768 H100s, beside placesim's prediction: the kernel model (sim/models/kernels.h) for the
// layers, NCCL's model on the dgx-a100 preset for the communication, the flow engine for the
// iteration. A table of the error per row, validation.csv and a scatter plot of predicted against
// measured. docs/validation.md says what was fitted to what.
#include <filesystem>
#include <string>
#include <vector>

namespace placesim {

inline constexpr const char* kValidationDescription =
    "Megatron-LM's GPT iteration times on DGX A100 (Korthikanti et al. 2022, Table 5: 4 models x 2 modes) beside placesim's "
    "kernel model, NCCL model and flow engine";

// A file of ../shared/validation: $PLACESIM_SHARED_DIR/validation, else ../shared/validation beside
// the source tree. Throws InputError (exit 2) naming it when absent.
std::filesystem::path validation_file(const std::string& name);

// Draws `csv` with tools/<script> into `dir` (its PNG and SVG). Returns 0, or 1 when the script
// failed (said on stderr, naming `command` and what installs matplotlib).
int draw_reproduction(const std::string& script, const std::filesystem::path& csv, const std::filesystem::path& dir,
                      const std::string& command);

// One row and mode of the table, as run.
struct ValidationRun {
  std::string model, mode;  // mode: "full recompute" or "selective + sequence parallel"
  int gpus = 0;
  double measured_s = 0, predicted_s = 0, mfu = 0;
  std::string note;  // "does not fit: ..." where placesim's memory count says the plan does not fit
};

// Runs every row in both modes with `gpu` (a preset name or a GPU YAML file: the fit tries
// candidates this way), printing each as it finishes.
std::vector<ValidationRun> run_validation(const std::string& gpu);
// The scaling tables, run with the calibrated model as it stands: MegaScale's Megatron-LM baseline
// on 256-1,024 A100-class GPUs (`gpu`) and Megatron-Core on 48-768 H100s.
std::vector<ValidationRun> run_scaling_validation(const std::string& gpu);

// Runs it into `output` (default: out/validation, as every reproduction's out/<name>). Returns 0, 1 when the plots failed.
int reproduce_validation(const std::string& output, bool plots, const std::string& gpu);

}  // namespace placesim
