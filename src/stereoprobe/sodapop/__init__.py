"""SODAPOP (An et al., EACL 2023): open-ended discovery of social biases in multiple-choice models."""
