"""Cross-Lingual Pitfalls: probing for questions that models answer in English but not in a target
language, in TextAttack's shape (an objective, a transformation, constraints and a search, each
passed in explicitly, and named recipes), plus evaluation of models on the pairs found."""
