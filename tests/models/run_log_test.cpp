// The run's log (models/run/run_log.h): one JSON object a line per event, in
// the documented field order, and a resumed run's log drops the lines past its
// checkpoint's step.
#include "models/run/run_log.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli/temp_dir.h"
#include "text_and_files.h"

using kiln::models::RunLog;

TEST_CASE("the run log writes each event's line, and a resume keeps only the lines up to its step") {
  TempDir dir;
  {
    RunLog log(dir.path().string(), 0);
    log.start(0, nlohmann::ordered_json{{"task", "copy"}, {"steps", 4}});
    log.train(2, 2.5, 0.001, 1200, 0.5);
    log.dev(2, 0.5, 2.25, 12.5, 30, true);
    log.train(4, 2, 0.002, 1300, 1);
    log.stop(4, "2 dev evaluations without a better bleu than step 2's");
  }
  CHECK(read_file(dir.file("log.jsonl")) ==
        "{\"event\":\"start\",\"step\":0,\"settings\":{\"task\":\"copy\",\"steps\":4}}\n"
        "{\"event\":\"train\",\"step\":2,\"loss\":2.5,\"lr\":0.001,\"tokens_per_second\":1200.0,\"minutes\":0.5}\n"
        "{\"event\":\"dev\",\"step\":2,\"minutes\":0.5,\"loss\":2.25,\"bleu\":12.5,\"chrf\":30.0,\"best\":true}\n"
        "{\"event\":\"train\",\"step\":4,\"loss\":2.0,\"lr\":0.002,\"tokens_per_second\":1300.0,\"minutes\":1.0}\n"
        "{\"event\":\"stop\",\"step\":4,\"reason\":\"2 dev evaluations without a better bleu than step 2's\"}\n");
  {
    RunLog resumed(dir.path().string(), 2);  // the checkpoint was saved at step 2
    resumed.train(3, 2.1, 0.0015, 1250, 0.75);
  }
  const std::string kept = read_file(dir.file("log.jsonl"));
  CHECK(kept.find("\"step\":4") == std::string::npos);
  CHECK(kept.find("\"event\":\"dev\",\"step\":2") != std::string::npos);
  CHECK(
      kept.ends_with("{\"event\":\"train\",\"step\":3,\"loss\":2.1,\"lr\":0.0015,\"tokens_per_second\":1250.0,"
                     "\"minutes\":0.75}\n"));
  RunLog{dir.path().string(), 0};  // a new run in the directory starts the log again
  CHECK(read_file(dir.file("log.jsonl")).empty());
}
