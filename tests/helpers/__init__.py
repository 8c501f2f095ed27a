"""What several test modules share, so that no test module imports another: each module here
holds one kind of thing.

- `book`: the book's notebook code (chapter 12's cells, its stubs, a notebook pair);
- `positional`: the `positional_encoding` solution and each mistake students make in it;
- `honest`: an honest `attention_basics` submission and its score;
- `corpus`: the corpus of submissions with known outcomes, and grading one of them;
- `classes`: class folders for batches, and what a batch recorded;
- `memory`: this process's resident memory, now and at its peak;
- `command`: the command line as a function;
- `scanning`: what the leak scans look for (hidden values, solution lines, a release's
  secrets), and how the project is reached as another user.
"""
