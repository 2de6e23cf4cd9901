"""The paper's Figure 5 and Table 1, as printed: shared by the metrics and the report tests."""

# The paper's Figure 5 (overall success of Gemini 2.0 Pro), numerators per target language (rows) and source
# language (columns, PAPER_ORDER); each column's denominator is its source language's count in Table 1.
TABLE_1 = {"de": 16, "en": 39, "fr": 22, "es": 32, "it": 29, "pt": 28, "id": 31, "he": 29, "hi": 64, "ko": 33,
           "ja": 26, "zh": 35}
FIGURE_5 = {
    "de": [6, 25, 11, 18, 14, 14, 16, 6, 35, 11, 3, 15],
    "en": [4, 34, 11, 19, 15, 10, 17, 9, 36, 11, 7, 19],
    "fr": [4, 27, 13, 18, 15, 15, 13, 7, 35, 12, 8, 13],
    "es": [6, 24, 10, 25, 14, 12, 17, 8, 39, 14, 6, 16],
    "it": [5, 26, 8, 16, 17, 14, 16, 6, 36, 11, 8, 16],
    "pt": [6, 23, 8, 18, 15, 17, 16, 5, 35, 14, 4, 15],
    "id": [6, 24, 9, 17, 10, 11, 22, 5, 32, 12, 5, 14],
    "he": [4, 15, 8, 14, 10, 11, 12, 11, 26, 13, 3, 11],
    "hi": [5, 20, 11, 10, 8, 7, 13, 5, 45, 12, 3, 14],
    "ko": [4, 19, 5, 9, 8, 11, 11, 4, 23, 20, 6, 11],
    "ja": [4, 23, 6, 14, 8, 4, 13, 5, 28, 15, 11, 17],
    "zh": [4, 22, 9, 17, 12, 10, 11, 7, 34, 16, 7, 23],
}
FIGURE_5_MEANS = [30.2, 60.3, 41.3, 50.8, 41.9, 40.5, 47.6, 22.4, 52.6, 40.7, 22.8, 43.8]
"""The bottom row of Figure 5: each source language's mean over the 12 target languages."""
