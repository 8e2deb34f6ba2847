"""Sentiment-style text classifier with a (Bi)LSTM in Keras 3 (torch backend).

    KERAS_BACKEND=torch python train.py --epochs 5 --batch_size 64 --num_samples 8000 --maxlen 100
"""
import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import argparse

import keras
import numpy as np
from keras import layers

parser = argparse.ArgumentParser()
parser.add_argument("--num_samples", type=int, default=5000, help="synthetic reviews in the training set")
parser.add_argument("--vocab_size", type=int, default=10000)
parser.add_argument("--maxlen", type=int, default=80, help="tokens per review (padded/truncated)")
parser.add_argument("--embed_dim", type=int, default=64)
parser.add_argument("--lstm_units", type=int, default=64)
parser.add_argument("--bidirectional", action="store_true")
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--learning_rate", type=float, default=1e-3)
parser.add_argument("--validation_split", type=float, default=0.1)
args = parser.parse_args()

keras.utils.set_random_seed(1337)


def synthetic_reviews(n, vocab, maxlen, rng):
    """Token-id sequences; 'positive' reviews over-sample a block of the vocabulary."""
    y = rng.integers(0, 2, size=n)
    x = rng.integers(2, vocab, size=(n, maxlen))
    pos_words = rng.integers(2, 200, size=(n, maxlen))
    mask = rng.random((n, maxlen)) < 0.15
    x = np.where(mask & (y[:, None] == 1), pos_words, x)
    lengths = rng.integers(maxlen // 3, maxlen + 1, size=n)
    x[np.arange(maxlen)[None, :] >= lengths[:, None]] = 0
    return x.astype("int32"), y.astype("float32")


rng = np.random.default_rng(0)
x_train, y_train = synthetic_reviews(args.num_samples, args.vocab_size, args.maxlen, rng)
x_test, y_test = synthetic_reviews(1000, args.vocab_size, args.maxlen, rng)
print(len(x_train), "train sequences", len(x_test), "test sequences")

inputs = keras.Input(shape=(args.maxlen,), dtype="int32")
x = layers.Embedding(args.vocab_size, args.embed_dim, mask_zero=False)(inputs)
lstm = layers.LSTM(args.lstm_units)
x = layers.Bidirectional(lstm)(x) if args.bidirectional else lstm(x)
x = layers.Dropout(0.3)(x)
outputs = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
model.summary()

model.compile(optimizer=keras.optimizers.Adam(args.learning_rate), loss="binary_crossentropy", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, validation_split=args.validation_split, verbose=2)
loss, acc = model.evaluate(x_test, y_test, verbose=0)
print(f"test loss {loss:.4f} test acc {acc:.4f}")
