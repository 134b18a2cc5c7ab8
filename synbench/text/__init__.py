"""Text tools the plugin families share: spaCy pipelines (`nlp`) and sentence encoders (`embeddings`), above the
job layer (an encoding is a resumable work record) and below the families. Internal: plugin packages import
`synbench.api`.
"""
