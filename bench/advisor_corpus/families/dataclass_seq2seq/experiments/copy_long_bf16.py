from seq2seq.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig


def get_config() -> ExperimentConfig:
    cfg = ExperimentConfig(name="copy_long_bf16")
    cfg.model = ModelConfig(d_model=96, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=384)
    cfg.data = DataConfig(task="copy", num_train=2000, min_len=32, max_len=64)
    cfg.train = TrainConfig(batch_size=32, num_epochs=2, precision="bf16")
    return cfg
