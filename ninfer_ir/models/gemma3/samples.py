"""The prompts that the benchmark and the agreement script run the model on: prose, code
and chat turns, each a few to a few dozen tokens, so that 64-token continuations stay
inside the sliding window."""

PROMPTS = ("The capital of France is",
           "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
           "<start_of_turn>user\nWrite a haiku about the sea.<end_of_turn>\n<start_of_turn>model\n",
           "Once upon a time, in a small village by the mountains, there lived",
           "The three laws of thermodynamics state that",
           "import numpy as np\n\ndef softmax(x):\n",
           "<start_of_turn>user\nExplain why the sky is blue in two sentences.<end_of_turn>\n"
           "<start_of_turn>model\n",
           "Here is a list of the planets of the solar system, in order from the sun:")
