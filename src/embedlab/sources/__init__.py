"""Sources: the only code that reads files. A model name or path -> an ``EmbeddingTable``.

Named tables (``seed``, ``minilm``, ``glove``) and paths (a Hugging Face style
folder, a ``.safetensors`` file, a ``.npy`` with a word list, GloVe/word2vec
text) are resolved once, in ``loaders``; ``checkpoint`` reads safetensors
headers and decides weight tying. Nothing is read with pickle.
"""
