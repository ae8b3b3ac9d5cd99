/* Trains examples/mlp.kir's two-layer perceptron with SGD through its training
 * step compiled ahead of time: a plain C program that links the object kiln
 * wrote, kiln's tiny C runtime and libm, and nothing else (README.md here shows
 * the commands; tests/jit/aot_test.cpp runs them and checks every number printed
 * against the interpreter).
 *
 *   ./mlp_train [STEPS [THREADS]]      (default: 3 steps, all cores)
 *
 * Prints each step's loss, then the last step's logits, one value a line as
 * "NAME[I] = VALUE" with 9 significant digits (enough to give the float back).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_runtime.h"
#include "mlp.h"

/* Deterministic values in [-0.25, 0.25], exact in float; the test computes the
 * same ones. */
static void fill(float* a, int64_t n, int64_t salt) {
  for (int64_t i = 0; i < n; ++i) a[i] = (float)((i * 7919 + salt * 104729) % 2001 - 1000) / 4000.0f;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 3;
  if (argc > 2) kiln_set_num_threads(atoi(argv[2]));

  static float x[MLP_X_NUMEL], w1[MLP_W1_NUMEL], b1[MLP_B1_NUMEL], w2[MLP_W2_NUMEL], b2[MLP_B2_NUMEL];
  static int32_t labels[MLP_LABELS_NUMEL], step[MLP_STEP_NUMEL]; /* the step counter starts at 0 */
  fill(x, MLP_X_NUMEL, 1);
  fill(w1, MLP_W1_NUMEL, 2);
  fill(b1, MLP_B1_NUMEL, 3);
  fill(w2, MLP_W2_NUMEL, 4);
  fill(b2, MLP_B2_NUMEL, 5);
  for (int i = 0; i < MLP_LABELS_NUMEL; ++i) labels[i] = i % 4;

  static float loss[MLP_LOSS_NUMEL], logits[MLP_LOGITS_NUMEL], lr[MLP_LR_NUMEL];
  static float new_w1[MLP_NEW_W1_NUMEL], new_b1[MLP_NEW_B1_NUMEL], new_w2[MLP_NEW_W2_NUMEL],
      new_b2[MLP_NEW_B2_NUMEL];
  static int32_t new_step[MLP_NEW_STEP_NUMEL];
  static _Alignas(MLP_WORKSPACE_ALIGN) unsigned char workspace[MLP_WORKSPACE_BYTES];
  const struct mlp_args args = {
      .x = x, .labels = labels, .w1 = w1, .b1 = b1, .w2 = w2, .b2 = b2, .step = step,
      .loss = loss, .logits = logits, .lr = lr,
      .new_step = new_step, .new_w1 = new_w1, .new_b1 = new_b1, .new_w2 = new_w2, .new_b2 = new_b2,
  };

  for (int s = 0; s < steps; ++s) {
    const int32_t status = mlp_run(&args, workspace);
    if (status != KILN_OK) {
      fprintf(stderr, "mlp_run: %s\n", kiln_error_message(status));
      return 1;
    }
    printf("loss[%d] = %.9g\n", s, loss[0]);
    /* The step wrote the updated params and state beside the old ones; commit them. */
    memcpy(step, new_step, sizeof step);
    memcpy(w1, new_w1, sizeof w1);
    memcpy(b1, new_b1, sizeof b1);
    memcpy(w2, new_w2, sizeof w2);
    memcpy(b2, new_b2, sizeof b2);
  }
  for (int i = 0; i < MLP_LOGITS_NUMEL; ++i) printf("logits[%d] = %.9g\n", i, logits[i]);
  return 0;
}
