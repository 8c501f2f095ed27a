"""Sinusoidal encodings written as students write them: the solution, the body of
`sinusoidal_encoding` as a loop, and each named mistake."""

from tests.conftest import ROOT

SOLUTION = (ROOT / "solutions" / "positional_encoding.py").read_text()
VECTORISED = '''    positions = np.arange(seq_len)[:, np.newaxis]
    frequencies = 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    angles = positions * frequencies[np.newaxis, :]
    encoding = np.zeros((seq_len, d_model))
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles)
'''
LOOP = '''    encoding = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            encoding[pos, i] = np.sin(pos / (10000 ** (i / d_model)))
            encoding[pos, i + 1] = np.cos(pos / (10000 ** (i / d_model)))
'''
MISTAKES = {
    "sin-cos-swapped": VECTORISED.replace("np.sin(angles)", "np.COS(angles)")
    .replace("np.cos(angles)", "np.sin(angles)").replace("np.COS", "np.cos"),
    "wrong-exponent-base": VECTORISED.replace("10000.0", "1000.0"),
    # PyTorch's div_term without its log(10000): exp(-2i/d) has the base e.
    "wrong-exponent-base (e)": VECTORISED.replace(
        "1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)",
        "np.exp(np.arange(0, d_model, 2) * (-1.0 / d_model))"),
    "positions-from-one": VECTORISED.replace("np.arange(seq_len)", "np.arange(1, seq_len + 1)"),
    "frequency-wrong-axis": LOOP.replace("pos / (10000 ** (i / d_model))",
                                         "i / (10000 ** (pos / d_model))"),
    "exponent-per-column": LOOP.replace("np.cos(pos / (10000 ** (i / d_model)))",
                                        "np.cos(pos / (10000 ** ((i + 1) / d_model)))"),
}


def with_encoding(body: str) -> str:
    """The solution module with the body of sinusoidal_encoding replaced."""
    start = SOLUTION.index('    positions = np.arange(seq_len)[:, np.newaxis]')
    end = SOLUTION.index("    return encoding")
    return SOLUTION[:start] + body + SOLUTION[end:]
