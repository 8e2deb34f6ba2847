from seq2seq.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        name="reverse_small",
        model=ModelConfig(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=256),
        data=DataConfig(task="reverse", num_train=3000, max_len=16),
        train=TrainConfig(batch_size=64, num_epochs=2),
    )
