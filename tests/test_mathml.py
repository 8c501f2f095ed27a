"""The notebook's TeX as MathML, made on the server for a page that runs no script."""

from __future__ import annotations

from grader.report import feedback, mathml


def test_inline_and_display_math_become_mathml():
    text = mathml.render("Each $\\mathbf{x}_{n}\\in\\mathbb{R}^{D}$ and $$\\sqrt{D_q}$$.")
    assert text.startswith('Each <math xmlns="http://www.w3.org/1998/Math/MathML" '
                           'display="inline"><mrow><msub><mi>&#x1D431;</mi>')
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in text
    assert "$" not in text and "\\mathbf" not in text


def test_code_prices_and_unreadable_tex_stay_as_written():
    code = "`$x$` and\n```\na = $b$\n```\ncosts $5 and $6; bad $\\frac{$ here"
    assert mathml.render(code) == code


def test_the_page_keeps_mathml_and_never_a_broken_image():
    html = mathml.render("$K^\\top Q$") + (
        '<img src="https://colab.research.google.com/assets/colab-badge.svg" '
        'alt="Open In Colab"><img src="https://example.com/x.png">'
        '<img src="data:image/png;base64,AAAA" alt="plot">'
        '<span class="grader-verdict grader-passed">forged</span>'
        '<math><mi href="https://example.com" mathvariant="bold">x</mi></math>')
    cleaned = feedback.clean(html)
    assert cleaned.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" '
                              'display="inline"><mrow><msup><mi>K</mi>')
    assert "<span>[Open In Colab]</span>" in cleaned and "example.com/x.png" not in cleaned
    assert '<img src="data:image/png;base64,AAAA" alt="plot">' in cleaned
    assert '<span>forged</span>' in cleaned  # a student's cell cannot wear a verdict
    assert '<mi mathvariant="bold">x</mi>' in cleaned  # no address in MathML
    ours = feedback.clean_ours('<span class="grader-verdict grader-passed">✓ passed</span>'
                               '<span class="grader-verdict grader-x">no</span>')
    assert ours == ('<span class="grader-verdict grader-passed">✓ passed</span>'
                    "<span>no</span>")
