"""stereoprobe: a reproducible companion to three papers on stereotyping bias in language models.

UnQover (Li et al., 2020), SODAPOP (An et al., 2023) and Bias-NLI (Dev et al., 2020).
"""

__version__ = "0.5.0"  # the one version number: pyproject.toml, CITATION.cff and `stereoprobe --version` read it
