/**
 * The demo's scripted agent for `examples/calculator`: it lists the files, reads the failing test and
 * the code, fixes `average`, runs the tests and reports what the test run actually printed.
 */
import type { ScriptedTurn } from '../script';

export const FIX_FAILING_TEST_SCENARIO: ScriptedTurn[] = [
  {
    label: 'look around',
    text: "I'll start by looking at the repository layout.",
    toolCalls: [{ name: 'list_files', input: {} }],
  },
  {
    label: 'run the tests',
    text: 'Let me run the test suite to see what fails.',
    toolCalls: [{ name: 'bash', input: { command: 'npm test 2>&1 | tail -n 30' } }],
  },
  {
    label: 'read the failing test',
    text: 'The `average` test fails. Reading the test and the implementation.',
    toolCalls: [
      { name: 'read_file', input: { path: 'test/math.test.js' } },
      { name: 'read_file', input: { path: 'src/math.js' } },
    ],
  },
  {
    label: 'fix average',
    text: '`average` divides by `values.length - 1`; the arithmetic mean divides by the number of values.',
    toolCalls: [
      {
        name: 'edit_file',
        input: {
          path: 'src/math.js',
          old_text: 'sum(values) / (values.length - 1)',
          new_text: 'sum(values) / values.length',
        },
      },
    ],
  },
  {
    label: 'verify',
    text: 'Running the tests again to verify the fix.',
    toolCalls: [{ name: 'bash', input: { command: 'npm test 2>&1 | tail -n 12' } }],
  },
  {
    label: 'report',
    respond: (request) => {
      const run = request.toolResults[0];
      const passed = run && !run.isError && /# fail 0/.test(run.content);
      return {
        text: passed
          ? 'Fixed `average` in `src/math.js`: it divided the sum by `values.length - 1` instead of `values.length`. All 4 tests pass now (`npm test`).'
          : `The fix did not make the tests pass; the last test run printed:\n${run?.content ?? '(nothing)'}`,
      };
    },
  },
];
