"""kiln.experimental.rnn: the LSTM of ``jax.experimental.rnn`` with cuDNN's packed weights, on every backend."""
from kiln.frontend.nn.rnn import get_num_params_in_lstm as get_num_params_in_lstm
from kiln.frontend.nn.rnn import init_lstm_weight as init_lstm_weight
from kiln.frontend.nn.rnn import lstm as lstm
from kiln.frontend.nn.rnn import lstm_ref as lstm_ref
from kiln.frontend.nn.rnn import swap_lstm_gates as swap_lstm_gates
from kiln.frontend.nn.rnn import unpack_lstm_weights as unpack_lstm_weights

__all__ = ["get_num_params_in_lstm", "init_lstm_weight", "lstm", "lstm_ref", "swap_lstm_gates", "unpack_lstm_weights"]
